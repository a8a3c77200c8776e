"""Serializers the API shares across apps: strict input, a user reference, the error body."""

from rest_framework import serializers


class StrictInputSerializer(serializers.Serializer):
    """An input serializer that refuses the fields it does not know: a 400 whose `errors`
    names each of them (`{"unitl": ["Unknown field: expected one of ..."]}`), rather than
    ignoring them, where a typo would silently change what happens (`unitl` would make
    a ban permanent). Used by the editors' moderation inputs and the flag."""

    def to_internal_value(self, data):
        if hasattr(data, "keys"):
            known = sorted(self.fields)
            unknown = sorted(str(key) for key in data.keys() if key not in self.fields)
            if unknown:
                message = f"Unknown field: expected one of {', '.join(known)}."
                raise serializers.ValidationError({key: [message] for key in unknown})
        return super().to_internal_value(data)


class UserRefSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)


class ErrorSerializer(serializers.Serializer):
    """The error body of every /api/ response (core/api_errors.py), for the OpenAPI schema."""

    detail = serializers.CharField()
    code = serializers.CharField()
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False)
