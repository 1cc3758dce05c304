# The README's test command on this machine.
make test
