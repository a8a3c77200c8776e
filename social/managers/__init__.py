"""MongoDB managers of the social graph: edges (source of truth) and the paged lists."""

from social.managers.edges import FollowEdgeManager
from social.managers.lists import FOLLOWERS, FOLLOWING, FollowListManager, IdPage
from social.managers.mutes import MuteManager
from social.managers.presence import PresenceManager
from social.managers.pulled import PulledAuthorManager

__all__ = ["FOLLOWERS", "FOLLOWING", "FollowEdgeManager", "FollowListManager", "IdPage", "MuteManager", "PresenceManager",
           "PulledAuthorManager"]
