"""Signals of the social app. Sent by services after the write succeeded.

user_followed(sender=None, follower=User, followee=User)
    `follower` started following `followee` (a new edge; a repeated follow sends nothing).
    The notifications app tells the followee.
activity_recorded(sender=None, activity_id=str, author_id=int)
    A publish or follow activity is in its author's log; its delivery to followers' feeds is
    queued (by id and author: the log's shard key). A comment's activity is not announced: the
    post's one social task (`social.comment_posted`) records and delivers it itself.
user_returned(sender=None, user_id=int)
    A user is back after FEED_ACTIVE_DAYS away; their pushed feed is refilled in the background.
user_muted(sender=None, muter_id=int, muted_id=int)
    A new mute; the muted author's copies leave the muter's feed in the background.

The last three are the social app's own: its receivers enqueue the tasks (services never
import tasks, and tasks call services).
"""

from django.dispatch import Signal

user_followed = Signal()
activity_recorded = Signal()
user_returned = Signal()
user_muted = Signal()
