#!/usr/bin/env perl
# compare_facts.pl -- compares two abi_dump outputs fact by fact, for abi_compare.sh.
#
#   compare_facts.pl OURS THEIRS EXPECTED
#
# Each dump line is `key value...` with a key no other line of that dump uses. EXPECTED lists the facts
# allowed to differ, one per line: `key | value in OURS | value in THEIRS` (# starts a comment).
# Prints one line per finding, for the shell script to count and show:
#   EXPECTED key: braid V | nvidia W   a listed difference, with exactly the listed values
#   DIFF key: braid V | nvidia W       any other difference (<absent> where a dump lacks the key)
#   UNUSED key                         a listed key whose values are now equal in both dumps
use strict;
use warnings;

die "usage: $0 OURS THEIRS EXPECTED\n" unless @ARGV == 3;
my ($ours_file, $theirs_file, $expected_file) = @ARGV;

# A dump as (key => value, [keys in file order]).
sub load_dump {
  my ($path) = @_;
  my (%value, @order);
  open(my $in, "<", $path) or die "$path: $!\n";
  while (my $line = <$in>) {
    chomp $line;
    my ($key, $rest) = $line =~ /^(\S+)\s?(.*)$/ or next;
    die "$path: key $key appears twice (dump keys must be unique)\n" if exists $value{$key};
    $value{$key} = $rest;
    push @order, $key;
  }
  return (\%value, \@order);
}

# The expected differences as (key => [ours, theirs]).
sub load_expected {
  my ($path) = @_;
  my %expected;
  open(my $in, "<", $path) or die "$path: $!\n";
  while (my $line = <$in>) {
    next if $line =~ /^\s*(#|$)/;
    chomp $line;
    my ($key, $ours, $theirs) = map { s/^\s+|\s+$//gr } split /\|/, $line, 3;
    die "$path: malformed line: $line\n" unless defined $theirs;
    $expected{$key} = [$ours, $theirs];
  }
  return \%expected;
}

my ($ours, $ours_order) = load_dump($ours_file);
my ($theirs, $theirs_order) = load_dump($theirs_file);
my $expected = load_expected($expected_file);

my %used;
for my $key (@$ours_order, grep { !exists $ours->{$_} } @$theirs_order) {
  my ($a, $b) = ($ours->{$key} // "<absent>", $theirs->{$key} // "<absent>");
  next if exists $ours->{$key} && exists $theirs->{$key} && $a eq $b;
  my $listed = $expected->{$key};
  if ($listed && $listed->[0] eq $a && $listed->[1] eq $b) {
    print "EXPECTED $key: braid $a | nvidia $b\n";
    $used{$key} = 1;
  } else {
    print "DIFF $key: braid $a | nvidia $b\n";
  }
}
# A listed key counts as stale only where this pair of dumps has it (the list covers several dumps).
for my $key (sort keys %$expected) {
  next if $used{$key} || !exists $ours->{$key} || !exists $theirs->{$key};
  print "UNUSED $key\n" if $ours->{$key} eq $theirs->{$key};
}
