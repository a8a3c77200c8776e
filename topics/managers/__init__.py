"""MongoDB managers of the topics app: the comment search index."""

from topics.managers.search import CommentSearchManager

__all__ = ["CommentSearchManager"]
