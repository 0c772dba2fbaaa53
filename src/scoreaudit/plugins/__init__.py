"""Built-in plugins: each module registers its entries in `scoreaudit.registry`."""
