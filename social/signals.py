"""Signals of the social app. Sent by services after the write succeeded.

user_followed(sender=None, follower=User, followee=User)
    `follower` started following `followee` (a new edge; a repeated follow sends nothing).
    The notifications app tells the followee.
"""

from django.dispatch import Signal

user_followed = Signal()
