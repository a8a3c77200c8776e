"""Serializers the API shares across apps: strict input, a user reference, the error body."""

from rest_framework import serializers


class StrictInputSerializer(serializers.Serializer):
    """The base of every API input serializer (JSON, form or query string).

    - It refuses the fields it does not know: a 400 whose `errors` names each of them
      (`{"unitl": ["Unknown field: expected one of ..."]}`), rather than ignoring them, where
      a typo would silently change what happens (`unitl` would make a ban permanent).
      Django's `csrfmiddlewaretoken`, which a form post carries, is not a field.
    - A text field takes a string and nothing else: DRF's CharField (and SlugField, EmailField,
      ...) would turn a JSON number into text, so `{"text": 123}` would post "123" and
      `{"parent": 1e999}` would look for a comment named "inf". Lists of text check each item.
    """

    def to_internal_value(self, data):
        if hasattr(data, "keys"):
            known = sorted(self.fields)
            unknown = sorted(str(key) for key in data.keys() if key not in self.fields and key != "csrfmiddlewaretoken")
            if unknown:
                message = f"Unknown field: expected one of {', '.join(known)}."
                raise serializers.ValidationError({key: [message] for key in unknown})
            wrong = {name: [problem] for name, field in self.fields.items()
                     if not field.read_only and name in data and (problem := _value_problem(field, data[name]))}
            if wrong:
                raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


# Fields whose text is digits: Python reads `٢٠٣٠` (or `²`) as a number and Django's date
# parsing matches it with `\d`, so a date or number typed in another script would pass.
_DIGIT_FIELDS = (serializers.DateTimeField, serializers.DateField, serializers.TimeField, serializers.IntegerField,
                 serializers.FloatField, serializers.DecimalField)


def _value_problem(field, value) -> str | None:
    """What is wrong with `value` for `field` before DRF converts it, or None: text fields take a
    string (or null where allowed, which the field itself checks), lists of text a list of
    strings, dates and numbers given as text ASCII digits only."""
    if value is None:
        return None
    if isinstance(field, serializers.CharField) and not isinstance(value, str):
        return "Not a valid string."
    if isinstance(field, serializers.ListField) and isinstance(field.child, serializers.CharField) \
            and isinstance(value, list | tuple) and not all(isinstance(item, str) for item in value):
        return "Not a valid string."
    if isinstance(field, _DIGIT_FIELDS) and isinstance(value, str) and not value.isascii():
        return "Use ASCII digits (0-9)."
    return None


class UserRefSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)


class ErrorSerializer(serializers.Serializer):
    """The error body of every /api/ response (core/api_errors.py), for the OpenAPI schema."""

    detail = serializers.CharField()
    code = serializers.CharField()
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False)
