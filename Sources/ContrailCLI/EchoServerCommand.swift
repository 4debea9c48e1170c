/// Not built yet: see the open issues.
enum EchoServerCommand {
    static func run(_ arguments: [String]) async throws {
        throw CLIError.usage("this command is not built yet")
    }
}
