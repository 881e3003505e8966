DELETE FROM version_selectors WHERE kind = 'capability';
ALTER TABLE version_selectors DROP CONSTRAINT version_selectors_kind_check;
ALTER TABLE version_selectors ADD CONSTRAINT version_selectors_kind_check
    CHECK (kind IN ('package', 'accelerator', 'arch', 'engine', 'container'));
