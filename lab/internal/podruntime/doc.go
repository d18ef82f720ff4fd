// Package podruntime is the lab's stand-in for the kubelet's container runtime. kwok marks pods
// Running and gives them IPs; this package makes that true: it adds each pod IP inside its
// node's namespace, materialises ConfigMap/Secret volumes into files, and runs a real process
// for the images it knows (CoreDNS for coredns images, the real Traefik for traefik images,
// OpenVPN, an HTTP responder for http-echo, the lab's forward-auth server for forward-auth), bound on the pod IP, restarted if it dies, reloaded when its config
// changes the way the real container would reload it. On a dedicated node a pod gets a network
// namespace of its own (podnet.go), set up by the real CNI plugins through libcni (cni.go,
// cnirun.go): the kernel's copy of the initial namespace's settings, then what the node's CNI
// configuration's plugins write (tuning's sysctl map; Calico's write played by tuning), then the
// pod's sysctls, so ip_forward follows the node, the CNI and the pod spec as on a real node.
package podruntime
