package labctl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// ProcLaptopVPN is the OpenVPN client in the laptop namespace.
const ProcLaptopVPN = "laptop-openvpn"

// laptopSpec writes the client configuration (certificates inline) and returns the client
// process. It reconnects by itself when the server pod is replaced: the server pushes
// keepalive and announces its exit.
func laptopSpec(l layout.Layout) (procs.Spec, error) { return LaptopSpec(l) }

// LaptopSpec is laptopSpec with extra configuration lines (a client variant).
func LaptopSpec(l layout.Layout, extra ...string) (procs.Spec, error) {
	dir := l.Path("laptop")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return procs.Spec{}, err
	}
	pkiDir := l.Path("pki")
	read := func(name, ext string) (string, error) {
		b, err := os.ReadFile(pki.File(pkiDir, name, ext))
		return string(b), err
	}
	ca, err := read(pki.CA, "crt")
	if err != nil {
		return procs.Spec{}, err
	}
	cert, err := read(pki.OpenVPNClient, "crt")
	if err != nil {
		return procs.Spec{}, err
	}
	key, err := read(pki.OpenVPNClient, "key")
	if err != nil {
		return procs.Spec{}, err
	}
	vpn, err := VPNNode(l)
	if err != nil {
		return procs.Spec{}, err
	}
	conf := fmt.Sprintf(`client
dev tun0
proto udp
remote %s %d
nobind
remote-cert-tls server
connect-retry 1 2
resolv-retry infinite
verb 3
%s<ca>
%s</ca>
<cert>
%s</cert>
<key>
%s</key>
`, vpn.LANIP, l.VPNPort, extraLines(extra), ca, cert, key)
	path := filepath.Join(dir, "client.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return procs.Spec{}, err
	}
	return procs.Spec{Name: ProcLaptopVPN, NS: l.Laptop.NS, Dir: dir, Argv: []string{"openvpn", "--config", path}}, nil
}

func extraLines(lines []string) string {
	var b strings.Builder
	for _, line := range lines {
		b.WriteString(line + "\n")
	}
	return b.String()
}
