"""Model providers: the provider-neutral types, the registry, and the implementations."""
