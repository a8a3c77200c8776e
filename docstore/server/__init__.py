"""The engine as a MongoDB server: the wire protocol (wire.py), the commands a driver sends
(commands.py), and TCP (tcp.py). The top layer: it imports the surface and nothing imports it but
the command line (`python -m docstore serve`)."""
