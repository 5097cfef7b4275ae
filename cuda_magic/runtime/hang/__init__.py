"""When a kernel hangs: waits that poll (Ctrl-C works), the launch time limit, the watchdog
for launches that return at once, and the diagnosis read with cuda-gdb (docs/launching.md,
"When a kernel hangs")."""
