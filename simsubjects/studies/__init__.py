"""Built-in studies."""
