"""Earlier texts of edited comments: collection `comment_revisions`.

One document per replaced text: `{discussion_id, comment_id, text, html, replaced (when
the edit replaced it), posted (when that text was first written), editor {id, name}}`.
Revisions live beside the comments, not inside them, so an embedded discussion or a
bucket does not grow with edits, and deleting a comment removes its revisions with one
`delete_many` on the index prefix.

Invariants:
- a revision is written BEFORE the edit that replaces its text (a failed edit leaves a
  harmless extra revision identical to the current text, never a lost one);
- `history()` lists one comment's revisions newest first from the index
  (discussion_id, comment_id, replaced desc), at most `limit` of them;
- `drop()` removes every revision of a comment (deletion), `drop_discussion()` of a topic.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pymongo import DESCENDING, IndexModel

from comments.managers.base import Author
from core.managers import MongoManager


@dataclass(frozen=True)
class Revision:
    text: str
    html: str
    posted: datetime
    replaced: datetime
    editor: Author


class CommentRevisionManager(MongoManager):
    collection_name = "comment_revisions"

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [
            IndexModel([("discussion_id", 1), ("comment_id", 1), ("replaced", DESCENDING)], name="revisions_by_comment"),
            # The shard key's index: hashed discussion, then the comment (a busy discussion splits).
            IndexModel([("discussion_id", "hashed"), ("comment_id", 1)], name="discussion_hashed_comment"),
        ]}

    @classmethod
    def shard_keys(cls):
        # Hashed: a topic id increases with every topic, and would send every insert to one chunk.
        # The comment after it: a busy discussion's history splits between chunks.
        return {cls.collection_name: {"discussion_id": "hashed", "comment_id": 1}}

    def record(self, *, discussion_id: int, comment_id: str, text: str, html: str, posted: datetime, replaced: datetime,
               editor: Author) -> None:
        self.collection.insert_one({
            "discussion_id": discussion_id, "comment_id": comment_id, "text": text, "html": html, "posted": posted,
            "replaced": replaced, "editor": {"id": editor.id, "name": editor.name},
        })

    def history(self, *, discussion_id: int, comment_id: str, limit: int = 100) -> list[Revision]:
        cursor = (self.collection.find({"discussion_id": discussion_id, "comment_id": comment_id}, {"_id": 0})
                  .sort([("replaced", DESCENDING)]).limit(limit))
        return [Revision(text=d["text"], html=d.get("html", ""), posted=d["posted"], replaced=d["replaced"],
                         editor=Author(id=d["editor"]["id"], name=d["editor"]["name"])) for d in cursor]

    def drop(self, *, discussion_id: int, comment_id: str) -> int:
        return self.collection.delete_many({"discussion_id": discussion_id, "comment_id": comment_id}).deleted_count

    def drop_discussion(self, *, discussion_id: int) -> None:
        self.collection.delete_many({"discussion_id": discussion_id})

    def forget_editor(self, *, editor_id: int, forgotten: Author) -> int:
        """The revisions an account replaced in others' comments name `forgotten` instead (account
        deletion; its own comments' revisions are dropped with their text). A maintenance scan:
        no index leads with the editor."""
        return self.collection.update_many({"editor.id": int(editor_id)},
                                           {"$set": {"editor": {"id": forgotten.id, "name": forgotten.name}}}).modified_count
