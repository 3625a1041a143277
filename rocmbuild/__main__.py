"""`python -m rocmbuild`: the same entry point as the `rocmbuild` command."""

from rocmbuild.cli import main

main()
