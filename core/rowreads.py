"""Model instances from a hand-written SELECT, for the reads every request makes.

For one row by a unique key, building and compiling a QuerySet costs several times the query
itself. A read made on every request (the topic of a comment API call: `topics.selectors`; the API
token with its user: `moderation.authentication`) writes its statement once per process from the
models' concrete fields, and turns the row into instances as the ORM would: each value through the
converters the ORM applies (`DatabaseOperations.get_db_converters`, then the field's own), the
instance made with `Model.from_db()` (so it is a loaded instance: `_state.adding` false, its db set).
"""

from __future__ import annotations

from django.db import connections


class ModelRow:
    """The concrete fields of `model` on the database `using`, in SELECT order: the column list of
    a statement (`columns(table)`) and the instance made from its slice of a row (`make`)."""

    def __init__(self, model, using: str):
        self.model, self.using = model, using
        connection = connections[using]
        self.quote = connection.ops.quote_name
        self.table = self.quote(model._meta.db_table)
        self.fields = []
        for f in model._meta.concrete_fields:
            col = f.get_col(model._meta.db_table)
            self.fields.append((f.attname, col, connection.ops.get_db_converters(col) + col.get_db_converters(connection)))
        self.width = len(self.fields)

    def columns(self, table: str | None = None) -> str:
        """`table.column, ...` of every concrete field (`table`: the quoted name or alias, the model's by default)."""
        table = table or self.table
        return ", ".join(f"{table}.{self.quote(col.target.column)}" for _, col, _ in self.fields)

    def make(self, values):
        """The instance of these values (a row's slice, in `columns` order), converted as the ORM converts them."""
        connection = connections[self.using]
        names, converted = [], []
        for value, (attname, col, converters) in zip(values, self.fields, strict=True):
            for convert in converters:
                value = convert(value, col, connection)
            names.append(attname)
            converted.append(value)
        return self.model.from_db(self.using, names, converted)

    def by_pks(self, pks) -> dict:
        """{pk: instance} of the rows of primary keys `pks`, one statement (a row gone is left out)."""
        pks = sorted(set(pks))
        if not pks:
            return {}
        pk = self.quote(self.model._meta.pk.column)
        with connections[self.using].cursor() as cursor:
            cursor.execute(f"SELECT {self.columns()} FROM {self.table} WHERE {self.table}.{pk} IN "
                           f"({', '.join(['%s'] * len(pks))})", pks)
            rows = cursor.fetchall()
        return {instance.pk: instance for instance in map(self.make, rows)}
