"""The largest body a task may send: checked by the API (tasks.serializers), and the size the
executor's memory bound assumes for every held job (workers.executor.claimer), which imports it
from here so a loop does not import the API's serializers."""

MAX_BODY_BYTES = 64 * 1024
