"""Drop-in interfaces of other memory libraries over the deepcontext engine."""
