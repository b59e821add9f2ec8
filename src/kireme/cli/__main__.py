"""``python -m kireme.cli`` runs the ``kireme`` command."""

from kireme.cli import main

main()
