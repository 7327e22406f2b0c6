"""``python -m efmoam.cli``: the ``efmoam`` command."""

from efmoam.cli.main import main

main()
