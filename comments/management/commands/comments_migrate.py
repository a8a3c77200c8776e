"""`comments_migrate`, the name `comments_move` had before the move protocol stopped sharing the
word "migration" with Django's schema migrations: kept as an alias, so scripts and the docs that
name it keep working."""

from comments.management.commands.comments_move import Command as MoveCommand


class Command(MoveCommand):
    help = "The same as comments_move (its former name). " + MoveCommand.help
