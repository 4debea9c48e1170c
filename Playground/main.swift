print("Contrail Playground: not built yet")
