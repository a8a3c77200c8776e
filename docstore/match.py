"""The query matcher: whether a document matches a filter (MongoDB manual, "Query Predicates").

mongomock's `filter_applies`, until the engine has a matcher of its own; every module of the
engine that matches a document imports it from here (semantics re-exports it).
"""

from mongomock.filtering import filter_applies

__all__ = ["filter_applies"]
