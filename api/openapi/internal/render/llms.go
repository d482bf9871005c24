package render

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"go.yaml.in/yaml/v4"
)

// methods are the operations of a path item, in the order they are shown.
var methods = []string{"get", "post", "put", "patch", "delete"}

// LLMs renders /llms-full.txt: the template (the prose a machine reader needs) with the parts
// made from the integration document in its place: {{.Endpoints}}, {{.Parameters}},
// {{.Errors}}, {{.ErrorCodes}} (from domain.ErrorCodes), {{.DeliveryHeaders}}, {{.DeliveryOutcomes}}, {{.Webhooks}} and {{.Schemas}}.
func LLMs(integrationYAML, prose []byte) ([]byte, error) {
	doc, err := parse(integrationYAML)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("llms-full.txt").Option("missingkey=error").Parse(string(prose))
	if err != nil {
		return nil, fmt.Errorf("render: the prose template: %w", err)
	}
	parts := map[string]string{}
	for name, render := range map[string]func() (string, error){
		"Endpoints":        doc.endpoints,
		"Parameters":       doc.parameters,
		"Errors":           doc.errors,
		"ErrorCodes":       errorCodes,
		"DeliveryHeaders":  doc.deliveryHeaders,
		"DeliveryOutcomes": doc.deliveryOutcomes,
		"Webhooks":         doc.webhooks,
		"Schemas":          doc.schemas,
	} {
		if parts[name], err = render(); err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, parts); err != nil {
		return nil, fmt.Errorf("render: the prose template: %w", err)
	}
	return out.Bytes(), nil
}

// endpoints lists every operation, grouped by the document's tags, in the order of the paths.
func (d document) endpoints() (string, error) {
	var b strings.Builder
	for _, tag := range items(get(d.root, "tags")) {
		name := text(tag, "name")
		fmt.Fprintf(&b, "### %s\n%s\n", name, strings.TrimSpace(text(tag, "description")))
		for _, path := range members(get(d.root, "paths")) {
			for _, method := range methods {
				op := get(path.value, method)
				if op == nil || !slices.Contains(scalars(get(op, "tags")), name) {
					continue
				}
				if err := d.operation(&b, strings.ToUpper(method), path.key, path.value, op); err != nil {
					return "", err
				}
			}
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func (d document) operation(b *strings.Builder, method, path string, item, op *yaml.Node) error {
	fmt.Fprintf(b, "\n%s %s  (%s)\n", method, path, d.access(op))
	writeIndented(b, "  ", "  ", sentence(text(op, "summary")))
	writeIndented(b, "  ", "  ", text(op, "description"))
	var shared []string
	for _, p := range append(items(get(item, "parameters")), items(get(op, "parameters"))...) {
		if refName(p) != "" {
			p, err := d.ref(p)
			if err != nil {
				return err
			}
			shared = append(shared, text(p, "in")+" "+text(p, "name"))
			continue
		}
		line := fmt.Sprintf("%s %s: %s", text(p, "in"), text(p, "name"), d.typeOf(get(p, "schema")))
		if desc := strings.TrimSpace(text(p, "description")); desc != "" {
			line += " — " + desc
		}
		writeIndented(b, "  ", "    ", line)
	}
	if len(shared) > 0 {
		fmt.Fprintf(b, "  parameters: %s\n", strings.Join(shared, ", "))
	}
	if body := get(op, "requestBody"); body != nil {
		content := members(get(body, "content"))
		if len(content) != 1 {
			return fmt.Errorf("render: %s %s: one request body content type expected", method, path)
		}
		required := ""
		if text(body, "required") != "true" {
			required = " (optional)"
		}
		fmt.Fprintf(b, "  body: %s%s\n", d.typeOf(get(content[0].value, "schema")), required)
		if ex := get(content[0].value, "example"); ex != nil {
			js, err := compactJSON(ex)
			if err != nil {
				return err
			}
			fmt.Fprintf(b, "  example: %s\n", js)
		}
	}
	var errs []string
	for _, r := range members(get(op, "responses")) {
		if refName(r.value) != "" && !strings.HasPrefix(r.key, "2") {
			errs = append(errs, r.key)
			continue
		}
		resp, err := d.ref(r.value)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "  %s: %s — %s\n", r.key, d.contentOf(resp), strings.TrimSpace(text(resp, "description")))
	}
	if len(errs) > 0 {
		fmt.Fprintf(b, "  errors: %s\n", strings.Join(errs, " "))
	}
	return nil
}

// access is who may call an operation: the scope its key needs, or no key.
func (d document) access(op *yaml.Node) string {
	security := get(op, "security")
	if security == nil {
		security = get(d.root, "security")
	}
	var needs []string
	for _, requirement := range items(security) {
		for _, scheme := range members(requirement) {
			if scopes := scalars(scheme.value); len(scopes) > 0 {
				needs = append(needs, strings.Join(scopes, ", "))
			} else {
				needs = append(needs, scheme.key)
			}
		}
	}
	if len(needs) == 0 {
		return "no key"
	}
	return strings.Join(needs, " or ")
}

// parameters describes the shared parameters of components.parameters.
func (d document) parameters() (string, error) {
	delivery := map[string]bool{} // the headers of webhook deliveries, shown with the webhooks
	for _, p := range items(get(d.firstWebhook(), "parameters")) {
		delivery[refName(p)] = true
	}
	var b strings.Builder
	for _, p := range members(get(get(d.root, "components"), "parameters")) {
		if delivery[p.key] {
			continue
		}
		fmt.Fprintf(&b, "%s %s: %s\n", text(p.value, "in"), text(p.value, "name"), d.typeOf(get(p.value, "schema")))
		writeIndented(&b, "  ", "  ", text(p.value, "description"))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// errors describes the shared error responses of components.responses.
func (d document) errors() (string, error) {
	var b strings.Builder
	for _, op := range d.errorStatuses() {
		r := get(get(get(d.root, "components"), "responses"), op.name)
		var headers []string
		for _, h := range members(get(r, "headers")) {
			if !strings.HasPrefix(h.key, "RateLimit-") {
				headers = append(headers, h.key)
			}
		}
		line := fmt.Sprintf("%s %s", op.status, d.contentOf(r))
		if len(headers) > 0 {
			line += ", headers " + strings.Join(headers, ", ")
		}
		fmt.Fprintf(&b, "%s\n", line)
		writeIndented(&b, "  ", "  ", text(r, "description"))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

type errorStatus struct{ status, name string }

// errorStatuses pairs each shared error response with the status the operations use it for.
func (d document) errorStatuses() []errorStatus {
	var out []errorStatus
	seen := map[string]bool{}
	for _, path := range members(get(d.root, "paths")) {
		for _, method := range methods {
			for _, r := range members(get(get(path.value, method), "responses")) {
				name := refName(r.value)
				if name != "" && !seen[name] && !strings.HasPrefix(r.key, "2") {
					seen[name] = true
					out = append(out, errorStatus{status: r.key, name: name})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b errorStatus) int { return strings.Compare(a.status, b.status) })
	return out
}

// firstWebhook is the POST of the first webhook: the delivery headers and outcomes are shared.
func (d document) firstWebhook() *yaml.Node {
	hooks := members(get(d.root, "webhooks"))
	if len(hooks) == 0 {
		return nil
	}
	return get(hooks[0].value, "post")
}

// deliveryHeaders describes the headers of every webhook delivery.
func (d document) deliveryHeaders() (string, error) {
	var b strings.Builder
	for _, p := range items(get(d.firstWebhook(), "parameters")) {
		p, err := d.ref(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s: %s\n", text(p, "name"), d.typeOf(get(p, "schema")))
		writeIndented(&b, "  ", "  ", text(p, "description"))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// deliveryOutcomes says what each answer of a receiver does.
func (d document) deliveryOutcomes() (string, error) {
	var b strings.Builder
	for _, r := range members(get(d.firstWebhook(), "responses")) {
		fmt.Fprintf(&b, "%s: %s\n", r.key, strings.TrimSpace(text(r.value, "description")))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// webhooks lists the outbound events and their bodies.
func (d document) webhooks() (string, error) {
	var b strings.Builder
	for _, hook := range members(get(d.root, "webhooks")) {
		op := get(hook.value, "post")
		fmt.Fprintf(&b, "%s\n", hook.key)
		writeIndented(&b, "  ", "  ", sentence(text(op, "summary")))
		writeIndented(&b, "  ", "  ", text(op, "description"))
		fmt.Fprintf(&b, "  body: %s\n", d.typeOf(get(get(get(get(op, "requestBody"), "content"), "application/json"), "schema")))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// schemas describes every named schema, member by member.
func (d document) schemas() (string, error) {
	var b strings.Builder
	for _, s := range members(get(get(d.root, "components"), "schemas")) {
		props := members(get(s.value, "properties"))
		if len(props) == 0 {
			fmt.Fprintf(&b, "\n%s: %s\n", s.key, d.typeOf(s.value))
			writeIndented(&b, "  ", "  ", text(s.value, "description"))
			continue
		}
		fmt.Fprintf(&b, "\n%s: object\n", s.key)
		writeIndented(&b, "  ", "  ", text(s.value, "description"))
		required := scalars(get(s.value, "required"))
		for _, p := range props {
			name := p.key
			if !slices.Contains(required, p.key) {
				name += "?"
			}
			line := fmt.Sprintf("%s: %s", name, d.typeOf(p.value))
			if desc := strings.TrimSpace(text(p.value, "description")); desc != "" {
				line += " — " + desc
			}
			writeIndented(&b, "  ", "    ", line)
		}
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// contentOf is what a response carries: its schema, or its media type, or nothing.
func (d document) contentOf(resp *yaml.Node) string {
	content := members(get(resp, "content"))
	if len(content) == 0 {
		return "no body"
	}
	if content[0].key != "application/json" {
		return content[0].key
	}
	return d.typeOf(get(content[0].value, "schema"))
}

// typeOf writes a schema as a short type expression: a name for a reference, [T] for an
// array, {string: T} for a map, "a" | "b" for an enum, with its format and limits.
func (d document) typeOf(s *yaml.Node) string {
	s = resolve(s)
	if s == nil {
		return "any"
	}
	if name := refName(s); name != "" {
		return name
	}
	if alts := items(get(s, "oneOf")); len(alts) > 0 {
		names := make([]string, len(alts))
		for i, a := range alts {
			names[i] = d.typeOf(a)
		}
		expr := "one of " + strings.Join(names, " | ")
		if by := text(get(s, "discriminator"), "propertyName"); by != "" {
			expr += fmt.Sprintf(" (by %q)", by)
		}
		return expr
	}
	var expr string
	types := scalars(get(s, "type"))
	switch {
	case get(s, "enum") != nil:
		values := items(get(s, "enum"))
		quoted := make([]string, len(values))
		for i, v := range values {
			if v.ShortTag() == "!!str" {
				quoted[i] = fmt.Sprintf("%q", v.Value)
			} else {
				quoted[i] = v.Value
			}
		}
		expr = strings.Join(quoted, " | ")
	case slices.Contains(types, "array"):
		expr = "[" + d.typeOf(get(s, "items")) + "]"
		if slices.Contains(types, "null") {
			expr += " | null"
		}
	case slices.Contains(types, "object") && get(s, "properties") == nil:
		if extra := get(s, "additionalProperties"); extra != nil && extra.Kind == yaml.MappingNode {
			expr = "{string: " + d.typeOf(extra) + "}"
		} else {
			expr = "object"
		}
	case len(types) > 0:
		expr = strings.Join(types, " | ")
	default:
		expr = "any"
	}
	var notes []string
	if f := text(s, "format"); f != "" {
		notes = append(notes, f)
	}
	for _, limit := range []struct{ key, format string }{
		{"minimum", ">= %s"}, {"maximum", "<= %s"}, {"minLength", "at least %s characters"},
		{"maxLength", "at most %s characters"}, {"minItems", "at least %s items"}, {"maxItems", "at most %s items"},
		{"maxProperties", "at most %s members"}, {"pattern", "matching %s"}, {"default", "default %s"},
	} {
		switch v := text(s, limit.key); {
		case v == "":
		case limit.key == "minLength" && v == "1":
			notes = append(notes, "not empty")
		default:
			notes = append(notes, fmt.Sprintf(limit.format, v))
		}
	}
	if len(notes) > 0 {
		expr += " (" + strings.Join(notes, ", ") + ")"
	}
	return expr
}

// compactJSON writes an example on one line.
func compactJSON(n *yaml.Node) (string, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, n, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// sentence ends a summary with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// writeIndented writes text with its first line indented by first and the others by rest;
// nothing for blank text. Blank lines stay blank.
func writeIndented(b *strings.Builder, first, rest, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	for i, line := range strings.Split(text, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			b.WriteString("\n")
		case i == 0:
			b.WriteString(first + line + "\n")
		default:
			b.WriteString(rest + strings.TrimSpace(line) + "\n")
		}
	}
}
