import Contrail

// The guided tour of Contrail: each chapter mirrors a part of the README.
let narrator = Narrator()
print("Contrail Playground")
try await observationChapter(narrator)
await changeSetChapter(narrator)
try await persistenceChapter(narrator)
try await syncChapter(narrator)
print("\nDone.")
