use super::*;

#[test]
fn ranks_print_as_ranges() {
    assert_eq!(rank_ranges(&[0, 1, 2, 3, 5, 7, 8]), "0-3, 5, 7-8");
    assert_eq!(rank_ranges(&[4]), "4");
    assert_eq!(rank_ranges(&[]), "");
}

#[test]
fn the_same_finding_on_several_ranks_is_one_with_their_counts_added() {
    let f = |rank, count| {
        Finding::on(
            Kind::LeakedObject,
            rank,
            "MPI_Comm_dup",
            None,
            count,
            "m".into(),
        )
    };
    let other = Finding::on(
        Kind::LeakedObject,
        1,
        "MPI_Comm_dup",
        None,
        1,
        "other".into(),
    );
    let report = Report::new(vec![f(2, 1), f(0, 2), other.clone(), f(1, 3)]);
    assert_eq!(report.findings.len(), 2);
    assert_eq!(report.findings[0].ranks, [0, 1, 2]);
    assert_eq!(report.findings[0].count, 6);
    assert_eq!(report.findings[1], other);
    let json = report.to_json();
    assert_eq!(json["findings"][0]["kind"], "leaked-object");
    assert_eq!(json["findings"][0]["site"], Json::Null);
    assert_eq!(
        report.findings[0].to_string(),
        "leaked-object: MPI_Comm_dup on ranks 0-2 (6×): m"
    );
}
