package faults

import "testing"

func TestWithoutAAAATemplateKeepsTheOtherTemplates(t *testing.T) {
	in := "apps.example.com:1053 {\n    template IN A {\n        answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n    }\n    template IN AAAA {\n        answer \"{{ .Name }} 60 IN AAAA fd00:10::11\"\n        answer \"{{ .Name }} 60 IN AAAA fd00:10::12\"\n    }\n    template ANY ANY {\n        rcode NOERROR\n    }\n}\n"
	want := "apps.example.com:1053 {\n    template IN A {\n        answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n    }\n    template ANY ANY {\n        rcode NOERROR\n    }\n}\n"
	if got := WithoutAAAATemplate(in); got != want {
		t.Fatalf("got %q", got)
	}
}
