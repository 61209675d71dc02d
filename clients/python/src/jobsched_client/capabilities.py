"""What the server behind a client can do, read once from its live OpenAPI schema.

The one switch for features a server may lack: task labels (a `labels` object on
tasks, and a `label=key=value` filter on the task list) and the JSON-lines export.
It also holds the server's defaults for task fields, so a sync can reset a
field a file no longer sets without restating the server's rule. Callers ask
`Capabilities`; nothing else inspects the schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Capabilities:
    task_labels: bool
    task_label_filter: bool
    task_export: bool = False
    task_defaults: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_schema(cls, schema: dict[str, Any]) -> Capabilities:
        components = schema.get("components", {}).get("schemas", {})
        task_input = components.get("TaskInput", {}).get("properties", {})
        task_output = components.get("TaskOutput", {}).get("properties", {})
        list_op = schema.get("paths", {}).get("/v1/tasks", {}).get("get", {})
        list_params = {param.get("name") for param in list_op.get("parameters", [])}
        return cls(
            task_labels="labels" in task_input and "labels" in task_output,
            task_label_filter="label" in list_params,
            task_export="/v1/tasks/export" in schema.get("paths", {}),
            task_defaults={name: spec["default"] for name, spec in task_input.items() if "default" in spec},
        )
