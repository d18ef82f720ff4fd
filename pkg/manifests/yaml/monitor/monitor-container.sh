# kubectl lanaccess monitor in a container on a LAN machine. The container shares the host's
# network (--network host): the probes must leave from the LAN, as a workstation's do, and
# client-check's checks (--workstation) read the host's resolver. Settings as for the systemd
# unit, in /etc/kubectl-lanaccess/monitor.yaml (keys are the long flag names).
docker run --detach --name kubectl-lanaccess-monitor --restart unless-stopped \
  --network host --read-only --user 65532:65532 --cap-drop ALL --security-opt no-new-privileges \
  --volume /etc/kubectl-lanaccess:/etc/kubectl-lanaccess:ro \
  {% .Image %} \
  monitor --config /etc/kubectl-lanaccess/monitor.yaml
# The same with podman: replace docker with podman. Stop it with `docker stop` (SIGTERM, exit 0).
