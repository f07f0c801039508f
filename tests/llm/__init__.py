"""Fake LLM provider servers for tests, speaking each API's wire format from a script (see ``scripted``)."""
