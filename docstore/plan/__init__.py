"""Planning: index bounds from a filter, the candidate plans and the choice between them, as
MongoDB's query planner makes them. Imports query and storage (the key encoding); never exec or the
surface."""
