"""The Chat tab's parts: the handlers (controller) and the names of the components a full update sets."""
