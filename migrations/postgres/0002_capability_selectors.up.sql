-- Capability selectors (`capability:>=8.0,<9.0`) came after 0001: the
-- selectors table takes them too, so it holds every kind of applies_to
-- selector. The value is the specifier as the selector prints it.
ALTER TABLE version_selectors DROP CONSTRAINT version_selectors_kind_check;
ALTER TABLE version_selectors ADD CONSTRAINT version_selectors_kind_check
    CHECK (kind IN ('package', 'accelerator', 'arch', 'engine', 'container', 'capability'));
