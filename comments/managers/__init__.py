"""Comment storage strategies, chosen per topic by `Topic.comment_storage`.

`manager_for(storage)` returns the manager of one strategy; every manager implements
`comments.managers.base.CommentManager` and is checked by the contract suite in
tests/contract.
"""

from comments.managers import credits, imports, likes, move_state, revisions, statuses  # noqa: F401  their indexes
from comments.managers.base import CommentManager
from comments.managers.bucketed import BucketedCommentManager
from comments.managers.document import DocumentCommentManager
from comments.managers.embedded import EmbeddedCommentManager

STRATEGIES: dict[str, type[CommentManager]] = {
    DocumentCommentManager.storage: DocumentCommentManager,
    EmbeddedCommentManager.storage: EmbeddedCommentManager,
    BucketedCommentManager.storage: BucketedCommentManager,
}


def manager_for(storage: str, **kwargs) -> CommentManager:
    """The manager of `storage` ("document", "embedded" or "bucketed"); kwargs go to its constructor (db, read_db)."""
    try:
        cls = STRATEGIES[storage]
    except KeyError:
        raise ValueError(f"unknown comment storage {storage!r}; expected one of {sorted(STRATEGIES)}") from None
    return cls(**kwargs)
