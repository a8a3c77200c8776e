"""MongoDB managers of the social graph: edges (source of truth) and the paged lists."""

from social.managers.edges import FollowEdgeManager
from social.managers.lists import FOLLOWERS, FOLLOWING, FollowListManager, IdPage

__all__ = ["FOLLOWERS", "FOLLOWING", "FollowEdgeManager", "FollowListManager", "IdPage"]
