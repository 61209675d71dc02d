"""`{% dead_letter_summary %}`: the DLQ summary (dead jobs per tenant, oldest dead job).

Shown on the dead-job list and on the admin's index, to users who may view dead
jobs; two bounded queries (see console.dead_letters.dead_summary).
"""

from django import template
from django.urls import reverse

from console import dead_letters

register = template.Library()


@register.inclusion_tag("admin/jobs/dead_summary.html", takes_context=True)
def dead_letter_summary(context):
    request = context["request"]
    if not request.user.has_perm("jobs.view_deadjob"):
        return {"show": False}
    return {
        "show": True,
        "dead_summary": dead_letters.dead_summary_for(request),
        "oldest_dead_job": dead_letters.oldest_dead_job(),
        "changelist_url": reverse("admin:jobs_deadjob_changelist"),
    }
