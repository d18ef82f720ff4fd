package proxyroute

// Setup is, in these tests, the builder: the objects discovery reads, set by hand, and the
// model built from them.
type Setup = builder

// DeriveModels builds the model as discovery does (kube.Setup.DeriveModels).
func (s *builder) DeriveModels(host string) { s.Model = Build(s.Objects, host) }
