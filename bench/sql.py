"""Counting SQL queries: a `connection.execute_wrapper` that counts every query (no logging cap)."""


class QueryCount:
    def __init__(self):
        self.n = 0

    def __call__(self, execute, sql, params, many, context):
        self.n += 1
        return execute(sql, params, many, context)
