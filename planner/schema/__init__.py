"""What a user gives dtplan: the instance and plan schemas, the presets catalog, strict types and input errors."""
