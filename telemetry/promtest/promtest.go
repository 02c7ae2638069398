// Package promtest reads Prometheus text exposition in tests: it parses a
// scrape with Prometheus's own parser (so a test fails on output a
// Prometheus server would refuse) and looks up samples by name and labels.
package promtest

import (
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a parsed scrape, by metric family name.
type Families map[string]*dto.MetricFamily

// Parse parses Prometheus text format.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("promtest: parse: %w", err)
	}
	return fams, nil
}

// Scrape GETs url, asking for the text format, and parses the answer.
func Scrape(url string) (Families, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("promtest: scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("promtest: scrape %s: %s: %s", url, resp.Status, b)
	}
	return Parse(resp.Body)
}

// Values returns the value of every sample of family name whose labels
// include every label in match, each with its labels.
func (f Families) Values(name string, match map[string]string) []Sample {
	fam, ok := f[name]
	if !ok {
		return nil
	}
	var out []Sample
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range match {
			if labels[k] != v {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		var v float64
		switch {
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		default:
			continue
		}
		out = append(out, Sample{Labels: labels, Value: v})
	}
	return out
}

// Sample is one sample of a family.
type Sample struct {
	Labels map[string]string
	Value  float64
}
