// Package termtext makes text that qkit did not write safe to put on a terminal. Such text comes
// from an assistant (question sets, through internal/questions), from the agent's replies and from
// other local processes (a shared questions store); a terminal would otherwise obey the control
// sequences inside it: move the cursor and erase what was shown, set the window title (OSC 0),
// write the clipboard (OSC 52), or reorder the characters of a line (bidirectional overrides).
//
// Visible shows every such character as a visible escape (\x1b, \u202e) instead, so a person sees
// exactly what they are answering and nothing is hidden or rewritten; VisibleLine does the same for
// text that must stay on one line (a table cell, an option in a list). Neither changes what is
// stored or sent as JSON: they are for rendering only.
package termtext
