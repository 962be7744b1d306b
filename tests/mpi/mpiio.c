/* ranks: 1-4 */
/* MPI-IO on a scratch file in argv[1], else $TMPDIR, else /tmp, named after
 * rank 0's pid and the time so concurrent runs do not collide: File_open,
 * write_at_all / read_at with explicit offsets, set_view with an interleaved
 * file type, write_all / read with the individual file pointer, seek and
 * get_position, get_size, sync, close and File_delete (the file must be gone
 * afterwards). */
#include "common.h"
#include <time.h>
#include <unistd.h>

#define BLOCK 4  /* ints per rank in the first section */
#define ROUNDS 3 /* ints per rank in the interleaved section */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = world_rank(), n = world_size();
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    char path[4096];
    if (rank == 0)
        snprintf(path, sizeof path, "%s/mpigram-io-%ld-%ld.dat", dir, (long)getpid(),
                 (long)time(NULL));
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);

    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_EXCL,
                         MPI_INFO_NULL, &fh));

    /* Section 1: rank r owns bytes [r*BLOCK*4, (r+1)*BLOCK*4). */
    int out[BLOCK], in[BLOCK];
    for (int i = 0; i < BLOCK; i++)
        out[i] = payload(rank, 1, i);
    MPI_Offset mine = (MPI_Offset)rank * BLOCK * sizeof(int);
    MPI_Status st;
    MPI_OK(MPI_File_write_at_all(fh, mine, out, BLOCK, MPI_INT, &st));
    int count;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_EQ(count, BLOCK);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int right = ring_right(rank, n);
    MPI_OK(MPI_File_read_at(fh, (MPI_Offset)right * BLOCK * sizeof(int), in, BLOCK, MPI_INT, &st));
    for (int i = 0; i < BLOCK; i++)
        CHECK_EQ(in[i], payload(right, 1, i));

    /* Section 2, after section 1: ints interleaved by rank. The view shows
     * each rank only its own ints: a file type of one int resized to n ints,
     * displaced by the rank. */
    MPI_Datatype one_of_n;
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)n * sizeof(int), &one_of_n);
    MPI_Type_commit(&one_of_n);
    MPI_Offset section2 = (MPI_Offset)n * BLOCK * sizeof(int);
    MPI_OK(MPI_File_set_view(fh, section2 + rank * (MPI_Offset)sizeof(int), MPI_INT, one_of_n,
                             "native", MPI_INFO_NULL));
    int rounds[ROUNDS], back[ROUNDS];
    for (int i = 0; i < ROUNDS; i++)
        rounds[i] = payload(rank, 2, i);
    MPI_OK(MPI_File_write_all(fh, rounds, ROUNDS, MPI_INT, &st));
    MPI_Offset pos;
    MPI_File_get_position(fh, &pos);
    CHECK_EQ(pos, ROUNDS); /* in etypes, relative to the view */
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    MPI_OK(MPI_File_read(fh, back, 1, MPI_INT, &st));
    MPI_File_seek(fh, 1, MPI_SEEK_CUR); /* skip one of mine */
    MPI_OK(MPI_File_read(fh, &back[2], 1, MPI_INT, &st));
    CHECK_EQ(back[0], payload(rank, 2, 0));
    CHECK_EQ(back[2], payload(rank, 2, 2));

    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset size;
    MPI_File_get_size(fh, &size);
    CHECK_EQ(size, section2 + (MPI_Offset)n * ROUNDS * sizeof(int));

    /* Back to a byte view: the whole interleaved section as seen by all. */
    MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    int all[64 * ROUNDS];
    MPI_OK(MPI_File_read_at(fh, section2, all, n * ROUNDS, MPI_INT, &st));
    for (int k = 0; k < n * ROUNDS; k++)
        CHECK_EQ(all[k], payload(k % n, 2, k / n));

    MPI_OK(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL);
    MPI_Type_free(&one_of_n);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_OK(MPI_File_delete(path, MPI_INFO_NULL));
        CHECK_MSG(access(path, F_OK) != 0, "%s still exists after MPI_File_delete", path);
    }
    MPI_Finalize();
    return 0;
}
