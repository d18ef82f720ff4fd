package checks

import (
	"fmt"
	"net/netip"
	"strings"
)

// restartDNS restarts the DNS workload's pods so they all read the current Corefile.
func restartDNS(env *Env) string {
	if w := env.Setup.DNSWorkload; w != nil {
		return fmt.Sprintf("kubectl -n %s rollout restart deployment/%s", w.Namespace, w.Name)
	}
	return fmt.Sprintf("kubectl -n %s rollout restart deployment/<dns deployment>", env.Setup.DNSService.Namespace)
}

// editCorefileCommand opens the ConfigMap that holds the Corefile.
func editCorefileCommand(env *Env) string {
	if cm := env.Setup.ConfigMap; cm != nil {
		return fmt.Sprintf("kubectl -n %s edit configmap %s", cm.Namespace, cm.Name)
	}
	return "kubectl -n <namespace> edit configmap <corefile configmap>"
}

// templateRemediation is the zone template that answers exactly want.
func templateRemediation(env *Env, want []netip.Addr) string {
	var b strings.Builder
	b.WriteString(editCorefileCommand(env))
	b.WriteString("\n# in the zone's server block, answer exactly the DNS Service's externalIPs:\ntemplate IN A {\n")
	for _, a := range want {
		fmt.Fprintf(&b, "    answer \"{{ .Name }} 60 IN A %s\"\n", a)
	}
	b.WriteString("}")
	return b.String()
}
