package output

// Palette colours text only when enabled: on a terminal without NO_COLOR. The zero value prints plain.
type Palette struct{ Enabled bool }

func (p Palette) wrap(code, s string) string {
	if !p.Enabled {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Bold, Green, Yellow, Red and Dim colour s when the palette is enabled.
func (p Palette) Bold(s string) string   { return p.wrap("1", s) }
func (p Palette) Green(s string) string  { return p.wrap("32", s) }
func (p Palette) Yellow(s string) string { return p.wrap("33", s) }
func (p Palette) Red(s string) string    { return p.wrap("31", s) }
func (p Palette) Dim(s string) string    { return p.wrap("2", s) }
