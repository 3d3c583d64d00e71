"""Judge models: the catalogue, the store (pull, verify, convert), host tuning, and the one
place a run's model is chosen (`resolve_model`) and opened (`open_session`)."""

from anvil_local.models.catalogue import ModelEntry, default_entry, entries, get_entry
from anvil_local.models.resolve import MODEL_ENV, model_file, resolve_model
from anvil_local.models.sessions import as_session, get_judge, open_session
from anvil_local.models.store import convert, ensure_model, pull, verify

__all__ = [
    "MODEL_ENV",
    "ModelEntry",
    "as_session",
    "convert",
    "default_entry",
    "ensure_model",
    "entries",
    "get_entry",
    "get_judge",
    "model_file",
    "open_session",
    "pull",
    "resolve_model",
    "verify",
]
