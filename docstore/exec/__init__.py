"""Execution: runs the plan the planner picked over storage, walking only its index ranges, applying
the query layer's matcher to what it reads, and counting `executionStats` as a server's explain
reports them. Imports plan, query and storage; never the surface."""
