"""Offline kits: `anvil bundle` writes one folder that installs anvil-local, a portable
llama.cpp build and the judge models on a machine with no package index (`kit.write_kit`),
and `anvil bundle verify` checks one against its manifest (`kit.verify_kit`)."""

from anvil_local.bundle.kit import Kit, KitRequest, verify_kit, write_kit
from anvil_local.bundle.wheels import Target

__all__ = ["Kit", "KitRequest", "Target", "verify_kit", "write_kit"]
