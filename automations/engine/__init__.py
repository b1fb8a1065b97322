"""The automations engine's runtime (`runner.Engine`): leases, the change feed, schedules,
runs. `serve` runs one in its process; `manage.py run_automations` runs one on its own."""
