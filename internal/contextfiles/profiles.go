package contextfiles

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/qkit-cli/qkit/internal/filestore"
	"github.com/qkit-cli/qkit/internal/output"
)

// DefaultProfile always exists, cannot be deleted or renamed, and is active when nothing else is.
const DefaultProfile = "default"

// MaxProfileNameLen is the longest profile name accepted.
const MaxProfileNameLen = 64

// ValidateProfileName checks a name that will become a file name: it must match
// ^[a-zA-Z0-9][a-zA-Z0-9_-]*$ and be at most 64 characters, so "../x" or "a/b" never become paths.
// The error is a usage error (exit 2) with the wording of Q's own /context.
func ValidateProfileName(name string) error {
	if name == "" {
		return output.UsageErrorf("Profile name cannot be empty")
	}
	if len(name) > MaxProfileNameLen {
		return output.UsageErrorf("Profile name must be at most %d characters", MaxProfileNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '_') {
			return output.UsageErrorf("Profile name must start with an alphanumeric character and can only contain alphanumeric characters, hyphens, and underscores")
		}
	}
	return nil
}

func profileNotFound(name string) error {
	return output.NotFoundf("Profile '%s' does not exist", name)
}

// Profiles lists the profiles: "default" first, then the others sorted.
func (s *Store) Profiles() ([]string, error) {
	entries, err := os.ReadDir(s.profilesDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list profiles in %s: %w", s.profilesDir(), err)
	}
	var names []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || name == DefaultProfile || ValidateProfileName(name) != nil {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return append([]string{DefaultProfile}, names...), nil
}

// Exists reports whether profile name exists ("default" always does). An invalid name does not.
func (s *Store) Exists(name string) bool {
	if ValidateProfileName(name) != nil {
		return false
	}
	if name == DefaultProfile {
		return true
	}
	fi, err := os.Stat(s.profilePath(name))
	return err == nil && fi.Mode().IsRegular()
}

// requireProfile fails when name is not a valid, existing profile.
func (s *Store) requireProfile(name string) error {
	if err := ValidateProfileName(name); err != nil {
		return err
	}
	if !s.Exists(name) {
		return profileNotFound(name)
	}
	return nil
}

// Active returns the active profile: the content of <context>/active, or "default" when the file is
// absent. A file naming an invalid profile is reported with its path.
func (s *Store) Active() (string, error) {
	data, err := filestore.ReadState(s.activePath())
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultProfile, nil
	}
	if err != nil && refused(err) == err {
		return "", fmt.Errorf("read %s: %w", s.activePath(), err)
	}
	if err != nil {
		return "", refused(err)
	}
	name := strings.TrimSpace(string(data))
	if name == "" {
		return DefaultProfile, nil
	}
	if err := ValidateProfileName(name); err != nil {
		return "", fmt.Errorf("corrupt active profile file %s: %q is not a profile name (fix it with qkit context switch)", s.activePath(), name)
	}
	return name, nil
}

// ResolveProfile returns the profile to use: flag when given (the global --profile flag), else the
// active profile. A profile that does not exist is a not-found error (exit 4) listing the profiles.
func (s *Store) ResolveProfile(flag string) (string, error) {
	name := flag
	if name == "" {
		var err error
		if name, err = s.Active(); err != nil {
			return "", err
		}
	} else if err := ValidateProfileName(name); err != nil {
		return "", err
	}
	if s.Exists(name) {
		return name, nil
	}
	all, err := s.Profiles()
	if err != nil {
		return "", err
	}
	return "", output.NotFoundf("Profile '%s' does not exist. Available profiles: %s", name, strings.Join(all, ", "))
}

// withProfilesLock serialises changes to the set of profiles and the active profile.
func (s *Store) withProfilesLock(fn func() error) error {
	lock, err := filestore.LockFor(s.profilesLockPath(), dirPerm)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	return fn()
}

// CreateProfile creates an empty profile. It does not switch to it.
func (s *Store) CreateProfile(name string) error {
	if err := ValidateProfileName(name); err != nil {
		return err
	}
	return s.withProfilesLock(func() error { return s.createLocked(name) })
}

func (s *Store) createLocked(name string) error {
	if s.Exists(name) {
		return output.Errorf(output.ExitFailure, "Profile '%s' already exists", name)
	}
	return filestore.WriteAtomic(s.profilePath(name), encodeConfig(fileConfig{}), filePerm, dirPerm)
}

// DeleteProfile removes a profile. "default" and the active profile cannot be deleted.
func (s *Store) DeleteProfile(name string) error {
	if err := ValidateProfileName(name); err != nil {
		return err
	}
	if name == DefaultProfile {
		return output.Errorf(output.ExitFailure, "Cannot delete the default profile")
	}
	return s.withProfilesLock(func() error {
		active, err := s.Active()
		if err != nil {
			return err
		}
		if name == active {
			return output.Errorf(output.ExitFailure, "Cannot delete the active profile. Switch to another profile first")
		}
		if !s.Exists(name) {
			return profileNotFound(name)
		}
		lock, err := filestore.LockFor(s.profilePath(name), dirPerm)
		if err != nil {
			return err
		}
		defer lock.Unlock()
		if err := os.Remove(s.profilePath(name)); err != nil {
			return fmt.Errorf("delete profile %s: %w", name, err)
		}
		_ = os.Remove(s.profilePath(name) + ".lock")
		return nil
	})
}

// RenameProfile renames a profile, keeping its rules; the active profile stays active under its new
// name. "default" cannot be renamed nor be the new name.
func (s *Store) RenameProfile(oldName, newName string) error {
	if err := ValidateProfileName(oldName); err != nil {
		return err
	}
	if err := ValidateProfileName(newName); err != nil {
		return err
	}
	if oldName == DefaultProfile {
		return output.Errorf(output.ExitFailure, "Cannot rename the default profile")
	}
	if newName == DefaultProfile {
		return output.Errorf(output.ExitFailure, "Cannot rename to 'default' as it's a reserved profile name")
	}
	return s.withProfilesLock(func() error {
		if !s.Exists(oldName) {
			return profileNotFound(oldName)
		}
		if s.Exists(newName) {
			return output.Errorf(output.ExitFailure, "Profile '%s' already exists", newName)
		}
		lock, err := filestore.LockFor(s.profilePath(oldName), dirPerm)
		if err != nil {
			return err
		}
		defer lock.Unlock()
		data, err := filestore.ReadState(s.profilePath(oldName))
		if err != nil {
			return fmt.Errorf("rename profile %s: %w", oldName, refused(err))
		}
		if err := filestore.WriteAtomic(s.profilePath(newName), data, filePerm, dirPerm); err != nil {
			return err
		}
		if active, err := s.Active(); err == nil && active == oldName {
			if err := s.setActive(newName); err != nil {
				return err
			}
		}
		if err := os.Remove(s.profilePath(oldName)); err != nil {
			return fmt.Errorf("rename profile %s: %w", oldName, err)
		}
		_ = os.Remove(s.profilePath(oldName) + ".lock")
		return nil
	})
}

// Switch makes name the active profile. With create, a missing profile is created first; it reports
// whether it did.
func (s *Store) Switch(name string, create bool) (created bool, err error) {
	if err := ValidateProfileName(name); err != nil {
		return false, err
	}
	err = s.withProfilesLock(func() error {
		if !s.Exists(name) {
			if !create {
				return output.NotFoundf("Profile '%s' does not exist. Use --create to create it", name)
			}
			if err := s.createLocked(name); err != nil {
				return err
			}
			created = true
		}
		return s.setActive(name)
	})
	return created, err
}

func (s *Store) setActive(name string) error {
	if name == DefaultProfile {
		if err := os.Remove(s.activePath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("switch profile: %w", err)
		}
		return nil
	}
	return filestore.WriteAtomic(s.activePath(), []byte(name+"\n"), filePerm, dirPerm)
}
