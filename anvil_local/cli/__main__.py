"""`python -m anvil_local.cli`: the `anvil` command without its console script."""

from anvil_local.cli import main

main()
