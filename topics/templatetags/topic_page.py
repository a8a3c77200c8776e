"""`{% topic_section section %}` and `{% topic_section section section.head %}`: render a
section of the topic page (`topics.sections.TopicSection`) inside the page's own context, with
the section's variables pushed on top (as `{% include %}` does, so the context processors run
once per page and the section's template sees `request`, `user`, `csrf_token`)."""

from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def topic_section(context, section, name=None) -> str:
    part = context.template.engine.get_template(name or section.template)
    with context.push(**section.context):
        return part.render(context)
