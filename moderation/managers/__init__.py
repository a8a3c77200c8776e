"""MongoDB collections of the moderation app: the queue, flags and the audit log."""

from moderation.managers.flags import FlagManager
from moderation.managers.log import ModerationLogManager
from moderation.managers.queue import ModerationQueueManager

__all__ = ["FlagManager", "ModerationLogManager", "ModerationQueueManager"]
