"""``python -m simsched ARGS``: the ``simsched`` command, for an environment without its
console script on the PATH."""

from simsched.cli import main

if __name__ == "__main__":
    main()
