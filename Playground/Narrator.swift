/// Prints the tour: chapter headings and what each observer sees.
@MainActor
final class Narrator {
    private var chapter = 0

    func chapter(_ title: String) {
        chapter += 1
        print("\n== \(chapter). \(title) ==")
    }

    func say(_ line: String) {
        print("   \(line)")
    }
}
