"""Serve the development receiver (workers/development_receiver.py) until SIGINT or SIGTERM."""

import signal
import threading

from django.core.management.base import BaseCommand

from workers.development_receiver import DevelopmentReceiver


class Command(BaseCommand):
    help = "Development only: answer every call on 127.0.0.1 with 200 (or ?status=N) and print one line per call."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=9911, help="port on 127.0.0.1 (default 9911)")

    def handle(self, *args, **options):
        server = DevelopmentReceiver("127.0.0.1", options["port"], out=self.stdout)

        def stop(signum, frame):
            # shutdown() waits for serve_forever to return: call it from another thread.
            threading.Thread(target=server.shutdown, daemon=True).start()

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        self.stdout.write(f"receiver: listening on http://127.0.0.1:{server.server_port}/")
        server.serve_forever(poll_interval=0.2)
        server.server_close()
